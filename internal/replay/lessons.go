package replay

// block is one text block of a structured response.
type block struct{ kind, text string }

// lessonText is a lesson in one language.
type lessonText struct {
	heading    string
	paragraphs []string
	extras     []block
	form       *formDef
}

// lesson is real teaching content for a topic of the anxiety module, found by keywords of the
// topic's id and name in either language. Order matters: the first lesson with a matching key
// wins, so specific topics ("cognitive restructuring") come before broad ones ("mental").
type lesson struct {
	keys   []string
	en, es lessonText
}

// formDef is an optional form offered with a lesson.
type formDef struct {
	id, title, description, submit string
	fieldID, fieldType, label      string
	options                        [][2]string // value, label
}

var anxietyLessons = []lesson{
	{
		keys: []string{"parasympathetic", "parasimpátic", "parasimpatic"},
		en: lessonText{
			heading: "The Parasympathetic Nervous System",
			paragraphs: []string{
				"The **parasympathetic nervous system** is the body's brake. After the alarm has fired, it slows the heart, deepens the breath and restarts digestion, bringing you back to a state of rest.",
				"It always switches on eventually, which is why anxiety rises, peaks and then falls, even if you do nothing at all.",
			},
			extras: []block{
				{"tip", "Slow breathing with a long out-breath is one of the quickest ways to engage this calming system on purpose."},
			},
		},
		es: lessonText{
			heading: "El sistema nervioso parasimpático",
			paragraphs: []string{
				"El **sistema nervioso parasimpático** es el freno del cuerpo. Después de que salte la alarma, ralentiza el corazón, hace la respiración más profunda y reactiva la digestión, devolviéndote a un estado de reposo.",
				"Siempre acaba activándose, y por eso la ansiedad sube, alcanza un pico y luego baja, aunque no hagas nada.",
			},
			extras: []block{
				{"tip", "Respirar despacio, con una exhalación larga, es una de las formas más rápidas de activar a propósito este sistema de calma."},
			},
		},
	},
	{
		keys: []string{"sympathetic", "simpátic", "simpatic"},
		en: lessonText{
			heading: "The Sympathetic Nervous System",
			paragraphs: []string{
				"The **sympathetic nervous system** is the body's accelerator. When your brain detects a threat, it switches on within seconds and drives the fight-or-flight response.",
				"It acts automatically, before you have time to think, which is why anxiety can feel as if it comes out of nowhere.",
			},
			extras: []block{
				{"list", "- Speeds up the heart and breathing\n- Tenses the muscles\n- Releases stored energy into the blood\n- Puts digestion and other non-urgent tasks on hold"},
			},
		},
		es: lessonText{
			heading: "El sistema nervioso simpático",
			paragraphs: []string{
				"El **sistema nervioso simpático** es el acelerador del cuerpo. Cuando tu cerebro detecta una amenaza, se activa en segundos y pone en marcha la respuesta de lucha o huida.",
				"Actúa de forma automática, antes de que tengas tiempo de pensar, y por eso la ansiedad puede parecer que surge de la nada.",
			},
			extras: []block{
				{"list", "- Acelera el corazón y la respiración\n- Tensa los músculos\n- Libera energía almacenada en la sangre\n- Deja en pausa la digestión y otras tareas no urgentes"},
			},
		},
	},
	{
		keys: []string{"adrenalin", "cortisol"},
		en: lessonText{
			heading: "Adrenaline and Cortisol",
			paragraphs: []string{
				"**Adrenaline** and **cortisol** are the two main stress hormones. Adrenaline acts within seconds and causes the racing heart and trembling; cortisol acts more slowly and keeps the body on alert for longer.",
				"Adrenaline is broken down within minutes, which is one reason a wave of panic cannot last indefinitely.",
			},
			extras: []block{
				{"info", "Long periods of stress keep cortisol high, which can leave you tired, tense and more easily alarmed. Rest and routine help bring it back down."},
			},
		},
		es: lessonText{
			heading: "Adrenalina y cortisol",
			paragraphs: []string{
				"La **adrenalina** y el **cortisol** son las dos principales hormonas del estrés. La adrenalina actúa en segundos y provoca el corazón acelerado y los temblores; el cortisol actúa más despacio y mantiene el cuerpo en alerta durante más tiempo.",
				"La adrenalina se elimina en pocos minutos, y esa es una de las razones por las que una ola de pánico no puede durar indefinidamente.",
			},
			extras: []block{
				{"info", "Las épocas largas de estrés mantienen alto el cortisol, lo que puede dejarte cansado, tenso y más fácil de alarmar. El descanso y las rutinas ayudan a bajarlo."},
			},
		},
	},
	{
		keys: []string{"distortion", "distorsion", "distorsión", "catastroph", "catastrof"},
		en: lessonText{
			heading: "Catastrophizing and Cognitive Distortions",
			paragraphs: []string{
				"Cognitive distortions are habitual thinking errors that make situations look more dangerous than they are. Everyone has them, and anxiety makes them louder.",
				"Learning to spot them by name is the first step towards questioning them.",
			},
			extras: []block{
				{"list", "- **Catastrophizing**: \"If I make a mistake, it will be a disaster.\"\n- **Mind reading**: \"Everyone can see how nervous I am.\"\n- **Fortune telling**: \"I just know it will go wrong.\"\n- **All-or-nothing thinking**: \"If it's not perfect, it's a failure.\""},
				{"tip", "When you catch one, label it: \"That's catastrophizing.\" Naming a distortion creates a little distance from it."},
			},
		},
		es: lessonText{
			heading: "Catastrofismo y distorsiones cognitivas",
			paragraphs: []string{
				"Las distorsiones cognitivas son errores de pensamiento habituales que hacen que las situaciones parezcan más peligrosas de lo que son. Todos las tenemos, y la ansiedad las amplifica.",
				"Aprender a reconocerlas por su nombre es el primer paso para cuestionarlas.",
			},
			extras: []block{
				{"list", "- **Catastrofismo**: \"Si me equivoco, será un desastre\".\n- **Leer la mente**: \"Todos notan lo nervioso que estoy\".\n- **Adivinar el futuro**: \"Sé que va a salir mal\".\n- **Todo o nada**: \"Si no es perfecto, es un fracaso\"."},
				{"tip", "Cuando detectes una, ponle nombre: \"Esto es catastrofismo\". Nombrar una distorsión crea un poco de distancia con ella."},
			},
		},
	},
	{
		keys: []string{"reassurance", "reaseguro", "tranquiliza"},
		en: lessonText{
			heading: "Reassurance Seeking",
			paragraphs: []string{
				"Reassurance seeking means repeatedly asking others, or searching online, to be told that everything will be fine. It brings relief for a moment, but the doubt soon returns and needs another dose.",
				"Like other safety behaviors, it prevents you from learning that you can tolerate uncertainty on your own.",
			},
			extras: []block{
				{"tip", "Try delaying the urge to ask for reassurance by ten minutes. Often the need fades by itself, and that is a powerful lesson for your brain."},
			},
		},
		es: lessonText{
			heading: "La búsqueda de reaseguro",
			paragraphs: []string{
				"Buscar reaseguro significa preguntar una y otra vez a otras personas, o buscar en internet, para que te confirmen que todo irá bien. Alivia por un momento, pero la duda vuelve pronto y pide otra dosis.",
				"Como otras conductas de seguridad, te impide aprender que puedes tolerar la incertidumbre por ti mismo.",
			},
			extras: []block{
				{"tip", "Prueba a retrasar diez minutos las ganas de pedir que te tranquilicen. A menudo la necesidad se desvanece sola, y eso enseña mucho a tu cerebro."},
			},
		},
	},
	{
		keys: []string{"genetic", "genétic", "heredit", "temperament"},
		en: lessonText{
			heading: "Genetics",
			paragraphs: []string{
				"Anxiety tends to run in families, and research suggests that genes account for part of the risk. What is inherited is not anxiety itself but a **temperament**: an alarm system that reacts a little faster and a little stronger.",
				"Genes are not destiny. A sensitive temperament combined with supportive experiences and good coping skills often leads to no anxiety problem at all.",
			},
			extras: []block{
				{"info", "A sensitive alarm also has strengths: people with it are often perceptive, careful and empathetic."},
			},
		},
		es: lessonText{
			heading: "La genética",
			paragraphs: []string{
				"La ansiedad suele darse en varias personas de una misma familia, y la investigación indica que los genes explican parte del riesgo. Lo que se hereda no es la ansiedad en sí, sino un **temperamento**: un sistema de alarma que reacciona un poco más rápido y con más fuerza.",
				"Los genes no son un destino. Un temperamento sensible junto con experiencias de apoyo y buenas estrategias de afrontamiento a menudo no desemboca en ningún problema de ansiedad.",
			},
			extras: []block{
				{"info", "Una alarma sensible también tiene virtudes: quienes la tienen suelen ser perceptivos, cuidadosos y empáticos."},
			},
		},
	},
	{
		keys: []string{"environment", "entorno", "ambiente", "ambiental"},
		en: lessonText{
			heading: "Environment",
			paragraphs: []string{
				"Your environment shapes how sensitive your alarm system becomes. Growing up with unpredictability, conflict, loss or very high pressure teaches the brain to stay on guard.",
				"Current surroundings matter too: an unstable job, money worries or a lack of support can keep anxiety higher than it would otherwise be.",
			},
			extras: []block{
				{"tip", "Think about which parts of your environment you can influence, even a little: routines, the people you spend time with, or how you plan your week."},
			},
		},
		es: lessonText{
			heading: "El entorno",
			paragraphs: []string{
				"Tu entorno influye en lo sensible que se vuelve tu sistema de alarma. Crecer con imprevisibilidad, conflictos, pérdidas o mucha presión enseña al cerebro a mantenerse en guardia.",
				"El entorno actual también cuenta: un trabajo inestable, las preocupaciones económicas o la falta de apoyo pueden mantener la ansiedad más alta de lo que estaría.",
			},
			extras: []block{
				{"tip", "Piensa en qué partes de tu entorno puedes influir, aunque sea un poco: tus rutinas, las personas con las que pasas tiempo o cómo planificas la semana."},
			},
		},
	},
	{
		keys: []string{"conditioning", "condicionamiento", "learned fear", "miedo aprendido"},
		en: lessonText{
			heading: "Learning and Conditioning",
			paragraphs: []string{
				"Much of anxiety is **learned**. If something frightening happens in a particular place, the brain can link that place with danger, so that being there later triggers the alarm on its own: this is called conditioning.",
				"We also learn by watching others: a parent who fears dogs or worries a lot can pass those reactions on without meaning to.",
			},
			extras: []block{
				{"info", "The good news: what has been learned can be unlearned. Exposure works precisely by creating new, safer learning."},
			},
		},
		es: lessonText{
			heading: "Aprendizaje y condicionamiento",
			paragraphs: []string{
				"Gran parte de la ansiedad es **aprendida**. Si ocurre algo que asusta en un lugar concreto, el cerebro puede asociar ese lugar con peligro, de modo que volver allí dispara la alarma por sí solo: esto se llama condicionamiento.",
				"También aprendemos observando a otros: un padre o una madre que teme a los perros o se preocupa mucho puede transmitir esas reacciones sin querer.",
			},
			extras: []block{
				{"info", "La buena noticia: lo aprendido se puede desaprender. La exposición funciona precisamente creando aprendizajes nuevos y más seguros."},
			},
		},
	},
	{
		keys: []string{"stress", "estrés", "estres"},
		en: lessonText{
			heading: "Stress",
			paragraphs: []string{
				"Stress and anxiety are close relatives. Stress is the strain of real demands, such as deadlines, illness or caring for others; anxiety is the alarm about what might happen.",
				"When stress piles up, the alarm system becomes more sensitive, so situations that usually feel manageable start to trigger anxiety.",
			},
			extras: []block{
				{"list", "- Sleep, movement and regular meals lower the baseline of stress\n- Breaking big demands into small steps makes them feel manageable\n- Talking to someone you trust shares the load"},
			},
		},
		es: lessonText{
			heading: "El estrés",
			paragraphs: []string{
				"El estrés y la ansiedad son parientes cercanos. El estrés es la tensión de exigencias reales, como plazos, enfermedades o cuidar de otras personas; la ansiedad es la alarma ante lo que podría pasar.",
				"Cuando el estrés se acumula, el sistema de alarma se vuelve más sensible, y situaciones que normalmente parecen manejables empiezan a provocar ansiedad.",
			},
			extras: []block{
				{"list", "- Dormir, moverse y comer con regularidad baja el nivel de estrés de base\n- Dividir las grandes exigencias en pasos pequeños las hace manejables\n- Hablar con alguien de confianza reparte la carga"},
			},
		},
	},
	{
		keys: []string{"compassion", "compasión", "compasion", "autocompasi"},
		en: lessonText{
			heading: "Self-Compassion",
			paragraphs: []string{
				"Self-compassion means treating yourself with the same kindness you would offer a good friend who is struggling. Anxiety often comes with a harsh inner critic, and criticism adds a second layer of threat.",
				"Research shows that self-compassion lowers anxiety and makes it easier to face difficult situations, because failure feels less catastrophic.",
			},
			extras: []block{
				{"tip", "In a hard moment, try saying to yourself: \"This is difficult right now. Many people feel this way. May I be kind to myself.\""},
			},
		},
		es: lessonText{
			heading: "La autocompasión",
			paragraphs: []string{
				"La autocompasión consiste en tratarte con la misma amabilidad que ofrecerías a un buen amigo que lo está pasando mal. La ansiedad suele venir acompañada de un crítico interior muy duro, y la crítica añade una segunda capa de amenaza.",
				"La investigación muestra que la autocompasión reduce la ansiedad y facilita afrontar situaciones difíciles, porque el fracaso se vive como algo menos catastrófico.",
			},
			extras: []block{
				{"tip", "En un momento difícil, prueba a decirte: \"Esto es difícil ahora mismo. Mucha gente se siente así. Que pueda ser amable conmigo\"."},
			},
		},
	},
	{
		keys: []string{"normal fear", "fear vs", "miedo normal", "fear and anxiety", "miedo y ansiedad"},
		en: lessonText{
			heading: "Normal Fear vs Anxiety",
			paragraphs: []string{
				"**Fear** is a response to a real, present danger: a car speeding towards you. **Anxiety** is a response to a possible, future threat: what might happen at tomorrow's meeting.",
				"Both use the same alarm system and feel much the same in the body. The difference is whether the danger is here now, and how likely and serious it really is.",
			},
			extras: []block{
				{"list", "- **Fear**: present danger, short-lived, ends when the danger passes\n- **Anxiety**: anticipated danger, can last long, often out of proportion to the actual risk"},
			},
		},
		es: lessonText{
			heading: "Miedo normal frente a ansiedad",
			paragraphs: []string{
				"El **miedo** es una respuesta a un peligro real y presente: un coche que viene hacia ti a toda velocidad. La **ansiedad** es una respuesta a una amenaza posible y futura: lo que podría pasar en la reunión de mañana.",
				"Ambos usan el mismo sistema de alarma y se sienten de forma parecida en el cuerpo. La diferencia está en si el peligro está aquí ahora, y en lo probable y grave que es en realidad.",
			},
			extras: []block{
				{"list", "- **Miedo**: peligro presente, breve, termina cuando pasa el peligro\n- **Ansiedad**: peligro anticipado, puede durar mucho, a menudo desproporcionada respecto al riesgo real"},
			},
		},
	},
	{
		keys: []string{"restructur", "reestructur", "thought record", "challenging thought", "cuestionar"},
		en: lessonText{
			heading: "Cognitive Restructuring",
			paragraphs: []string{
				"Cognitive restructuring means examining anxious thoughts instead of automatically believing them. You treat each worry as a hypothesis and look at the evidence, just as a scientist would.",
				"The goal is not positive thinking but **balanced** thinking: a realistic view that includes both the risks and your ability to cope.",
			},
			extras: []block{
				{"list", "1. Write down the anxious thought\n2. Ask: what is the evidence for it, and against it?\n3. Ask: what is the most likely outcome, and could I cope with it?\n4. Write a more balanced alternative thought"},
				{"info", "Example: \"Everyone will laugh at me\" can become \"Some people might notice I'm nervous, but most will focus on what I'm saying.\""},
			},
		},
		es: lessonText{
			heading: "Reestructuración cognitiva",
			paragraphs: []string{
				"La reestructuración cognitiva consiste en examinar los pensamientos ansiosos en lugar de creerlos automáticamente. Tratas cada preocupación como una hipótesis y revisas las pruebas, como haría un científico.",
				"El objetivo no es pensar en positivo, sino pensar de forma **equilibrada**: una visión realista que incluya tanto los riesgos como tu capacidad para afrontarlos.",
			},
			extras: []block{
				{"list", "1. Escribe el pensamiento ansioso\n2. Pregúntate: ¿qué pruebas hay a favor y en contra?\n3. Pregúntate: ¿qué es lo más probable que ocurra, y podría afrontarlo?\n4. Escribe un pensamiento alternativo más equilibrado"},
				{"info", "Ejemplo: \"Todos se van a reír de mí\" puede convertirse en \"Puede que alguien note que estoy nervioso, pero la mayoría se fijará en lo que digo\"."},
			},
		},
	},
	{
		keys: []string{"safety", "seguridad"},
		en: lessonText{
			heading: "Safety Behaviors",
			paragraphs: []string{
				"Safety behaviors are small actions people use to get through an anxious situation: carrying water, sitting near the exit, rehearsing sentences, or always bringing a trusted person along.",
				"They feel protective, but they steal the credit for your success. Your brain concludes \"I was only fine because I had my water\", so the fear never gets corrected.",
			},
			extras: []block{
				{"list", "- Checking your phone to avoid conversations\n- Over-preparing or scripting what to say\n- Holding onto something to stop trembling\n- Seeking reassurance from others"},
				{"info", "Dropping safety behaviors gradually, one at a time, lets you discover that you can cope without them."},
			},
		},
		es: lessonText{
			heading: "Conductas de seguridad",
			paragraphs: []string{
				"Las conductas de seguridad son pequeñas acciones que usamos para sobrellevar una situación que nos angustia: llevar agua, sentarse cerca de la salida, ensayar frases o ir siempre con una persona de confianza.",
				"Parecen protegerte, pero se llevan el mérito de tu éxito. Tu cerebro concluye \"solo estuve bien porque llevaba agua\", y el miedo nunca se corrige.",
			},
			extras: []block{
				{"list", "- Mirar el móvil para evitar conversaciones\n- Prepararse en exceso o memorizar lo que vas a decir\n- Agarrarse a algo para no temblar\n- Buscar que otros te tranquilicen"},
				{"info", "Dejar las conductas de seguridad poco a poco, una a una, te permite descubrir que puedes afrontar la situación sin ellas."},
			},
		},
	},
	{
		keys: []string{"fight", "flight", "lucha", "huida"},
		en: lessonText{
			heading: "The Fight-or-Flight Response",
			paragraphs: []string{
				"The fight-or-flight response is an ancient survival mechanism. When your brain perceives a threat, the **sympathetic nervous system** releases adrenaline and cortisol within seconds, preparing you to fight or to run.",
				"The same response fires for modern, non-physical threats such as a presentation, a conflict or an uncertain future, where fighting or running does not help.",
			},
			extras: []block{
				{"list", "- Heart rate rises to pump blood to the muscles\n- Breathing speeds up to take in more oxygen\n- Digestion slows down, which can cause nausea\n- Attention narrows onto the threat"},
				{"tip", "The **parasympathetic nervous system** always brings the body back to calm. Anxiety peaks and then falls; it cannot escalate forever."},
			},
		},
		es: lessonText{
			heading: "La respuesta de lucha o huida",
			paragraphs: []string{
				"La respuesta de lucha o huida es un mecanismo de supervivencia muy antiguo. Cuando tu cerebro percibe una amenaza, el **sistema nervioso simpático** libera adrenalina y cortisol en segundos y te prepara para luchar o escapar.",
				"La misma respuesta se activa ante amenazas modernas y no físicas, como una presentación, un conflicto o un futuro incierto, donde luchar o huir no ayuda.",
			},
			extras: []block{
				{"list", "- El corazón late más rápido para llevar sangre a los músculos\n- La respiración se acelera para captar más oxígeno\n- La digestión se frena, lo que puede causar náuseas\n- La atención se estrecha sobre la amenaza"},
				{"tip", "El **sistema nervioso parasimpático** siempre devuelve la calma al cuerpo. La ansiedad sube y luego baja; no puede aumentar para siempre."},
			},
		},
	},
	{
		keys: []string{"breath", "respira"},
		en: lessonText{
			heading: "Calm Breathing",
			paragraphs: []string{
				"When you are anxious, breathing becomes fast and shallow, which can cause dizziness and more physical alarm. Slowing your breath sends a signal of safety to your nervous system.",
				"The key is an out-breath that is longer than the in-breath: exhaling activates the parasympathetic system that calms the body down.",
			},
			extras: []block{
				{"list", "1. Breathe in gently through your nose for **4 seconds**\n2. Pause for **1-2 seconds**\n3. Breathe out slowly through your mouth for **6 seconds**\n4. Repeat for two to five minutes"},
				{"tip", "Practise calm breathing a few times a day when you are not anxious, so it feels familiar when you need it."},
			},
		},
		es: lessonText{
			heading: "Respiración tranquila",
			paragraphs: []string{
				"Cuando sientes ansiedad, la respiración se vuelve rápida y superficial, lo que puede provocar mareo y más alarma física. Respirar más despacio envía una señal de seguridad a tu sistema nervioso.",
				"La clave es que la exhalación sea más larga que la inhalación: al soltar el aire se activa el sistema parasimpático, que calma el cuerpo.",
			},
			extras: []block{
				{"list", "1. Inhala suavemente por la nariz durante **4 segundos**\n2. Haz una pausa de **1-2 segundos**\n3. Exhala despacio por la boca durante **6 segundos**\n4. Repite durante dos a cinco minutos"},
				{"tip", "Practica la respiración tranquila varias veces al día cuando no estés ansioso, para que te resulte familiar cuando la necesites."},
			},
		},
	},
	{
		keys: []string{"grounding", "anclaje", "enraiz", "5 4 3 2 1", "5-4-3-2-1"},
		en: lessonText{
			heading: "Grounding Techniques",
			paragraphs: []string{
				"Grounding brings your attention back to the present moment when anxious thoughts pull you into the future. It uses your senses to anchor you in what is happening right now.",
				"The best-known exercise is the **5-4-3-2-1 technique**, which you can use anywhere without anyone noticing.",
			},
			extras: []block{
				{"list", "- **5** things you can see\n- **4** things you can touch\n- **3** things you can hear\n- **2** things you can smell\n- **1** thing you can taste"},
				{"tip", "Grounding is not about making anxiety disappear; it gives your mind somewhere steady to rest while the wave passes."},
			},
		},
		es: lessonText{
			heading: "Técnicas de anclaje",
			paragraphs: []string{
				"El anclaje devuelve tu atención al momento presente cuando los pensamientos ansiosos te arrastran hacia el futuro. Utiliza tus sentidos para situarte en lo que está pasando ahora mismo.",
				"El ejercicio más conocido es la **técnica 5-4-3-2-1**, que puedes usar en cualquier lugar sin que nadie lo note.",
			},
			extras: []block{
				{"list", "- **5** cosas que puedes ver\n- **4** cosas que puedes tocar\n- **3** cosas que puedes oír\n- **2** cosas que puedes oler\n- **1** cosa que puedes saborear"},
				{"tip", "El anclaje no busca que la ansiedad desaparezca; le da a tu mente un lugar estable donde descansar mientras pasa la ola."},
			},
		},
	},
	{
		keys: []string{"exposure", "exposición", "exposicion"},
		en: lessonText{
			heading: "Gradual Exposure",
			paragraphs: []string{
				"Exposure is the most effective long-term way to reduce anxiety. It means facing feared situations step by step, staying long enough for the anxiety to rise and then fall on its own.",
				"Each successful step teaches your brain that the situation is safer than it predicted and that you can cope, which is exactly the learning that avoidance prevents.",
			},
			extras: []block{
				{"list", "1. List situations you avoid and rate each from 0 to 10\n2. Start with one rated around 3 or 4\n3. Stay in it without safety behaviors until the anxiety eases\n4. Repeat it until it feels manageable, then move up a step"},
				{"tip", "Go at your own pace. Exposure should be challenging but never overwhelming; small steps taken often work best."},
			},
		},
		es: lessonText{
			heading: "Exposición gradual",
			paragraphs: []string{
				"La exposición es la forma más eficaz de reducir la ansiedad a largo plazo. Consiste en afrontar paso a paso las situaciones temidas, permaneciendo en ellas el tiempo suficiente para que la ansiedad suba y luego baje por sí sola.",
				"Cada paso superado enseña a tu cerebro que la situación es más segura de lo que predecía y que puedes afrontarla, justo el aprendizaje que la evitación impide.",
			},
			extras: []block{
				{"list", "1. Haz una lista de situaciones que evitas y puntúa cada una de 0 a 10\n2. Empieza por una de 3 o 4 puntos\n3. Permanece en ella sin conductas de seguridad hasta que la ansiedad baje\n4. Repítela hasta que te resulte manejable y sube un escalón"},
				{"tip", "Ve a tu ritmo. La exposición debe suponer un reto, pero nunca abrumarte; los pasos pequeños y frecuentes funcionan mejor."},
			},
		},
	},
	{
		keys: []string{"avoid", "evita", "evitación"},
		en: lessonText{
			heading: "Avoidance",
			paragraphs: []string{
				"Avoidance means staying away from situations, places, people or feelings that trigger anxiety. It is the most natural reaction to fear, and in the short term it works: the anxiety disappears.",
				"In the long term, avoidance shrinks your world. Each time you avoid something, your brain files it as \"dangerous\", and the fear grows rather than fades.",
			},
			extras: []block{
				{"list", "- Obvious avoidance: not going to the party, skipping the meeting\n- Subtle avoidance: going but staying silent, avoiding eye contact\n- Mental avoidance: distracting yourself from worrying thoughts"},
				{"tip", "Notice one small thing you have been avoiding this week. You don't need to change it yet: noticing is the first step."},
			},
		},
		es: lessonText{
			heading: "La evitación",
			paragraphs: []string{
				"La evitación consiste en alejarse de las situaciones, lugares, personas o sensaciones que provocan ansiedad. Es la reacción más natural ante el miedo y, a corto plazo, funciona: la ansiedad desaparece.",
				"A largo plazo, la evitación hace tu mundo más pequeño. Cada vez que evitas algo, tu cerebro lo archiva como \"peligroso\", y el miedo crece en lugar de disminuir.",
			},
			extras: []block{
				{"list", "- Evitación evidente: no ir a la fiesta, faltar a la reunión\n- Evitación sutil: ir pero quedarse callado, evitar el contacto visual\n- Evitación mental: distraerse de los pensamientos que preocupan"},
				{"tip", "Fíjate en algo pequeño que hayas evitado esta semana. No hace falta cambiarlo todavía: darte cuenta es el primer paso."},
			},
		},
	},
	{
		keys: []string{"maintain", "mantien", "mantenimiento", "vicious", "círculo vicioso", "persist"},
		en: lessonText{
			heading: "What Keeps Anxiety Going",
			paragraphs: []string{
				"Whatever first caused anxiety, other factors keep it going. The two most important are **avoidance** and **safety behaviors**: both bring relief in the moment but prevent you from learning that you can cope.",
				"This creates a vicious cycle: anxiety leads to avoidance, avoidance brings relief, and relief makes avoidance more likely the next time.",
			},
			extras: []block{
				{"list", "1. A situation triggers anxiety\n2. You avoid it or use a safety behavior\n3. The anxiety drops quickly, which feels like proof that it worked\n4. Next time, the situation feels even more threatening"},
				{"info", "Breaking the cycle means gradually doing the opposite of what anxiety asks, which is what the coping strategies in this module are about."},
			},
		},
		es: lessonText{
			heading: "Qué mantiene la ansiedad",
			paragraphs: []string{
				"Sea cual sea la causa inicial de la ansiedad, hay otros factores que la mantienen. Los dos más importantes son la **evitación** y las **conductas de seguridad**: ambas alivian en el momento, pero impiden aprender que puedes afrontar la situación.",
				"Así se forma un círculo vicioso: la ansiedad lleva a la evitación, la evitación trae alivio y el alivio hace más probable volver a evitar la próxima vez.",
			},
			extras: []block{
				{"list", "1. Una situación dispara la ansiedad\n2. La evitas o usas una conducta de seguridad\n3. La ansiedad baja rápido, y eso parece demostrar que funcionó\n4. La próxima vez, la situación parece todavía más amenazante"},
				{"info", "Romper el círculo significa hacer poco a poco lo contrario de lo que pide la ansiedad, y de eso tratan las estrategias de afrontamiento de este módulo."},
			},
		},
	},
	{
		keys: []string{"cause", "causa", "origin", "origen"},
		en: lessonText{
			heading: "What Causes Anxiety?",
			paragraphs: []string{
				"There is rarely a single cause of anxiety. It usually develops from a combination of **biological**, **psychological** and **environmental** factors that make the alarm system more sensitive.",
				"Knowing the causes is not about blame. It shows that anxiety is a learned and understandable response, and what has been learned can be changed.",
			},
			extras: []block{
				{"list", "- **Genetics and temperament**: some people are born with a more sensitive alarm\n- **Life experiences**: stressful or traumatic events, especially early in life\n- **Learning**: watching anxious role models or being overprotected\n- **Current stress**: work pressure, health worries, relationship problems"},
			},
		},
		es: lessonText{
			heading: "¿Qué causa la ansiedad?",
			paragraphs: []string{
				"Rara vez hay una única causa de la ansiedad. Suele surgir de una combinación de factores **biológicos**, **psicológicos** y **ambientales** que hacen más sensible el sistema de alarma.",
				"Conocer las causas no sirve para buscar culpables. Muestra que la ansiedad es una respuesta aprendida y comprensible, y lo aprendido se puede cambiar.",
			},
			extras: []block{
				{"list", "- **Genética y temperamento**: algunas personas nacen con una alarma más sensible\n- **Experiencias vitales**: sucesos estresantes o traumáticos, sobre todo en la infancia\n- **Aprendizaje**: modelos ansiosos a tu alrededor o sobreprotección\n- **Estrés actual**: presión laboral, preocupaciones de salud, problemas de pareja"},
			},
		},
	},
	{
		keys: []string{"three", "tres niveles", "levels", "niveles"},
		en: lessonText{
			heading: "The Three Levels of Anxiety",
			paragraphs: []string{
				"Anxiety shows up on three interconnected levels: **physical**, **mental** and **behavioral**. Recognising each one helps you notice anxiety earlier and choose how to respond.",
			},
			extras: []block{
				{"list", "1. **Physical level**: racing heart, fast breathing, sweating, tense muscles\n2. **Mental level**: worried thoughts, \"what if\" questions, expecting the worst\n3. **Behavioral level**: avoiding situations, escaping early, relying on safety behaviors"},
				{"info", "These three levels feed each other and can create what is called the \"vicious cycle of anxiety\"."},
			},
			form: &formDef{
				id: "anxiety_levels_check", title: "Quick Reflection", submit: "Share my experience",
				description: "This helps me understand which level resonates most with you.",
				fieldID:     "primary_level", fieldType: "radio",
				label: "Which level of anxiety do you notice most in yourself?",
				options: [][2]string{
					{"physical", "Physical (body sensations)"}, {"mental", "Mental (thoughts and worries)"},
					{"behavioral", "Behavioral (what I do or avoid)"}, {"all", "All three equally"}, {"unsure", "I'm not sure yet"},
				},
			},
		},
		es: lessonText{
			heading: "Los tres niveles de la ansiedad",
			paragraphs: []string{
				"La ansiedad se manifiesta en tres niveles conectados entre sí: **físico**, **mental** y **conductual**. Reconocer cada uno te ayuda a notar la ansiedad antes y a elegir cómo responder.",
			},
			extras: []block{
				{"list", "1. **Nivel físico**: corazón acelerado, respiración rápida, sudor, tensión muscular\n2. **Nivel mental**: pensamientos de preocupación, preguntas \"¿y si…?\", esperar lo peor\n3. **Nivel conductual**: evitar situaciones, huir antes de tiempo, apoyarse en conductas de seguridad"},
				{"info", "Estos tres niveles se alimentan entre sí y pueden crear lo que se llama el \"círculo vicioso de la ansiedad\"."},
			},
			form: &formDef{
				id: "anxiety_levels_check", title: "Reflexión rápida", submit: "Compartir mi experiencia",
				description: "Esto me ayuda a entender qué nivel te resulta más familiar.",
				fieldID:     "primary_level", fieldType: "radio",
				label: "¿Qué nivel de ansiedad notas más en ti?",
				options: [][2]string{
					{"physical", "Físico (sensaciones corporales)"}, {"mental", "Mental (pensamientos y preocupaciones)"},
					{"behavioral", "Conductual (lo que hago o evito)"}, {"all", "Los tres por igual"}, {"unsure", "Todavía no lo sé"},
				},
			},
		},
	},
	{
		keys: []string{"physical", "físic", "fisic", "body", "cuerpo", "corporal", "somatic"},
		en: lessonText{
			heading: "The Physical Level",
			paragraphs: []string{
				"On the physical level, anxiety is your body preparing for action. Adrenaline speeds up your heart and breathing, sends blood to your muscles and makes you sweat, so you can run or defend yourself.",
				"These sensations can feel alarming, especially when they appear out of nowhere, but each one has a protective purpose and none of them is harmful.",
			},
			extras: []block{
				{"list", "- Racing or pounding heart\n- Shortness of breath or fast breathing\n- Sweating, trembling or shaking\n- Tense muscles, headache or stomach discomfort\n- Dizziness or feeling light-headed"},
				{"tip", "When you notice these sensations, try naming them: \"This is my alarm system, not danger.\" Labelling a sensation often takes away some of its power."},
			},
			form: &formDef{
				id: "physical_symptoms_check", title: "Your Body's Signals", submit: "Share",
				description: "Check any sensations you have noticed during anxious moments.",
				fieldID:     "physical_symptoms", fieldType: "checkbox",
				label: "Physical sensations I experience:",
				options: [][2]string{
					{"heart_racing", "Racing heart"}, {"breathing", "Shortness of breath"}, {"sweating", "Sweating"},
					{"trembling", "Trembling or shaking"}, {"stomach", "Stomach discomfort"}, {"dizziness", "Dizziness"},
				},
			},
		},
		es: lessonText{
			heading: "El nivel físico",
			paragraphs: []string{
				"En el nivel físico, la ansiedad es tu cuerpo preparándose para actuar. La adrenalina acelera el corazón y la respiración, envía sangre a los músculos y te hace sudar, para que puedas huir o defenderte.",
				"Estas sensaciones pueden asustar, sobre todo cuando aparecen sin motivo aparente, pero cada una tiene una función protectora y ninguna es dañina.",
			},
			extras: []block{
				{"list", "- Corazón acelerado o palpitaciones\n- Falta de aire o respiración rápida\n- Sudor o temblores\n- Tensión muscular, dolor de cabeza o malestar de estómago\n- Mareo o sensación de aturdimiento"},
				{"tip", "Cuando notes estas sensaciones, prueba a nombrarlas: \"Es mi sistema de alarma, no un peligro\". Ponerle nombre a una sensación suele quitarle fuerza."},
			},
			form: &formDef{
				id: "physical_symptoms_check", title: "Las señales de tu cuerpo", submit: "Compartir",
				description: "Marca las sensaciones que hayas notado en momentos de ansiedad.",
				fieldID:     "physical_symptoms", fieldType: "checkbox",
				label: "Sensaciones físicas que experimento:",
				options: [][2]string{
					{"heart_racing", "Corazón acelerado"}, {"breathing", "Falta de aire"}, {"sweating", "Sudor"},
					{"trembling", "Temblores"}, {"stomach", "Malestar de estómago"}, {"dizziness", "Mareo"},
				},
			},
		},
	},
	{
		keys: []string{"mental", "cognitiv", "thought", "pensamiento", "worry", "preocupa"},
		en: lessonText{
			heading: "The Mental Level",
			paragraphs: []string{
				"On the mental level, anxiety shows up as thoughts: worrying, imagining the worst, and asking \"what if…?\" over and over. Anxious thinking overestimates how likely danger is and underestimates your ability to cope.",
				"These thoughts feel like facts, but they are predictions, and predictions can be checked.",
			},
			extras: []block{
				{"list", "- **Catastrophising**: \"If I make a mistake, it will be a disaster.\"\n- **Mind reading**: \"Everyone can see how nervous I am.\"\n- **Fortune telling**: \"I just know it will go wrong.\"\n- **All-or-nothing thinking**: \"If it's not perfect, it's a failure.\""},
				{"tip", "Next time you notice a worried thought, ask yourself: \"What is the evidence for and against this?\""},
			},
		},
		es: lessonText{
			heading: "El nivel mental",
			paragraphs: []string{
				"En el nivel mental, la ansiedad aparece en forma de pensamientos: preocuparse, imaginar lo peor y preguntarse \"¿y si…?\" una y otra vez. El pensamiento ansioso sobrestima la probabilidad del peligro e infravalora tu capacidad para afrontarlo.",
				"Estos pensamientos parecen hechos, pero son predicciones, y las predicciones se pueden comprobar.",
			},
			extras: []block{
				{"list", "- **Catastrofizar**: \"Si me equivoco, será un desastre\".\n- **Leer la mente**: \"Todos notan lo nervioso que estoy\".\n- **Adivinar el futuro**: \"Sé que va a salir mal\".\n- **Pensamiento de todo o nada**: \"Si no es perfecto, es un fracaso\"."},
				{"tip", "La próxima vez que notes un pensamiento de preocupación, pregúntate: \"¿Qué pruebas hay a favor y en contra?\""},
			},
		},
	},
	{
		keys: []string{"behavio", "conduct", "comportamiento"},
		en: lessonText{
			heading: "The Behavioral Level",
			paragraphs: []string{
				"On the behavioral level, anxiety changes what you do. The most common response is to avoid or escape whatever makes you anxious, or to get through it with small protective habits.",
				"These behaviors bring quick relief, which is exactly why they are so tempting, but over time they teach your brain that the situation really was dangerous.",
			},
			extras: []block{
				{"list", "- Avoiding places, people or activities\n- Leaving situations early\n- Seeking reassurance again and again\n- Over-preparing or checking repeatedly\n- Putting off things that feel stressful"},
				{"info", "Short-term relief, long-term cost: this trade-off is central to understanding why anxiety persists."},
			},
		},
		es: lessonText{
			heading: "El nivel conductual",
			paragraphs: []string{
				"En el nivel conductual, la ansiedad cambia lo que haces. La respuesta más habitual es evitar o escapar de lo que te angustia, o sobrellevarlo con pequeños hábitos de protección.",
				"Estas conductas alivian rápido, y por eso resultan tan tentadoras, pero con el tiempo enseñan a tu cerebro que la situación sí era peligrosa.",
			},
			extras: []block{
				{"list", "- Evitar lugares, personas o actividades\n- Marcharse antes de tiempo\n- Buscar que te tranquilicen una y otra vez\n- Prepararse en exceso o comprobar repetidamente\n- Aplazar lo que te genera estrés"},
				{"info", "Alivio a corto plazo, coste a largo plazo: este intercambio es clave para entender por qué la ansiedad persiste."},
			},
		},
	},
	{
		keys: []string{"coping", "afrontamiento", "strateg", "estrategia", "toolkit", "herramienta"},
		en: lessonText{
			heading: "Coping With Anxiety",
			paragraphs: []string{
				"Coping strategies work on the same three levels as anxiety itself. Some calm the body, some change the way you think, and some change what you do.",
				"No single strategy works for everyone, so it helps to build a small toolkit and practise it when you are calm, not only in difficult moments.",
			},
			extras: []block{
				{"list", "- **Body**: calm breathing, muscle relaxation\n- **Mind**: grounding, questioning anxious thoughts\n- **Behavior**: gradual exposure instead of avoidance"},
				{"tip", "Practise a strategy daily for a week before judging whether it works. Skills get stronger with repetition."},
			},
			form: &formDef{
				id: "coping_preference", title: "Your Toolkit", submit: "Choose",
				description: "Pick the strategy you would most like to practise first.",
				fieldID:     "preferred_strategy", fieldType: "radio",
				label: "Which strategy would you like to try first?",
				options: [][2]string{
					{"breathing", "Calm breathing"}, {"grounding", "Grounding (5-4-3-2-1)"},
					{"restructuring", "Questioning anxious thoughts"}, {"exposure", "Small steps of exposure"}, {"unsure", "I'm not sure yet"},
				},
			},
		},
		es: lessonText{
			heading: "Afrontar la ansiedad",
			paragraphs: []string{
				"Las estrategias de afrontamiento actúan en los mismos tres niveles que la ansiedad. Algunas calman el cuerpo, otras cambian tu forma de pensar y otras cambian lo que haces.",
				"Ninguna estrategia funciona para todo el mundo, así que conviene reunir una pequeña caja de herramientas y practicarla en momentos de calma, no solo en los difíciles.",
			},
			extras: []block{
				{"list", "- **Cuerpo**: respiración tranquila, relajación muscular\n- **Mente**: anclaje, cuestionar los pensamientos ansiosos\n- **Conducta**: exposición gradual en lugar de evitación"},
				{"tip", "Practica una estrategia a diario durante una semana antes de juzgar si funciona. Las habilidades se fortalecen con la repetición."},
			},
			form: &formDef{
				id: "coping_preference", title: "Tu caja de herramientas", submit: "Elegir",
				description: "Elige la estrategia que más te gustaría practicar primero.",
				fieldID:     "preferred_strategy", fieldType: "radio",
				label: "¿Qué estrategia te gustaría probar primero?",
				options: [][2]string{
					{"breathing", "Respiración tranquila"}, {"grounding", "Anclaje (5-4-3-2-1)"},
					{"restructuring", "Cuestionar los pensamientos ansiosos"}, {"exposure", "Pequeños pasos de exposición"}, {"unsure", "Todavía no lo sé"},
				},
			},
		},
	},
	{
		keys: []string{"problem", "problema", "disorder", "trastorno"},
		en: lessonText{
			heading: "When Anxiety Becomes a Problem",
			paragraphs: []string{
				"Anxiety becomes a problem when it is **too intense**, **lasts too long**, or shows up in situations that are not really dangerous. Then it stops protecting you and starts to limit your life.",
				"A useful question is not \"Do I feel anxious?\" but \"Is anxiety stopping me from doing things that matter to me?\"",
			},
			extras: []block{
				{"list", "- Avoiding work, study or social situations\n- Worry that takes up hours of the day\n- Physical symptoms that disturb sleep or health\n- Feeling that anxiety decides for you"},
				{"info", "If anxiety is seriously limiting your life, talking to a doctor or psychologist is a sign of strength, and effective treatments exist."},
			},
		},
		es: lessonText{
			heading: "Cuándo la ansiedad se vuelve un problema",
			paragraphs: []string{
				"La ansiedad se convierte en un problema cuando es **demasiado intensa**, **dura demasiado** o aparece en situaciones que en realidad no son peligrosas. Entonces deja de protegerte y empieza a limitar tu vida.",
				"Una pregunta útil no es \"¿Siento ansiedad?\", sino \"¿La ansiedad me impide hacer cosas que me importan?\"",
			},
			extras: []block{
				{"list", "- Evitar el trabajo, los estudios o las situaciones sociales\n- Preocupaciones que ocupan horas del día\n- Síntomas físicos que alteran el sueño o la salud\n- Sentir que la ansiedad decide por ti"},
				{"info", "Si la ansiedad limita seriamente tu vida, hablar con un médico o un psicólogo es una muestra de fortaleza, y existen tratamientos eficaces."},
			},
		},
	},
	{
		keys: []string{"intro", "what is anxiety", "qué es la ansiedad", "que es la ansiedad", "what is", "basics", "fundamentos de la ansiedad", "overview"},
		en: lessonText{
			heading: "What Is Anxiety?",
			paragraphs: []string{
				"Anxiety is the body's natural alarm system. It prepares you to deal with danger by making you alert, focused and ready to act, and in small doses it is useful: it helps you prepare for an exam or react quickly on the road.",
				"Anxiety becomes a problem when the alarm goes off too often, too strongly, or in situations that are not actually dangerous. Then it starts to limit what you do, and that is what this module will help you understand and change.",
			},
			extras: []block{
				{"info", "Anxiety is **not** dangerous, even when it feels overwhelming. It is uncomfortable, but it always passes."},
			},
		},
		es: lessonText{
			heading: "¿Qué es la ansiedad?",
			paragraphs: []string{
				"La ansiedad es el sistema de alarma natural del cuerpo. Te prepara para afrontar un peligro poniéndote alerta, concentrado y listo para actuar, y en pequeñas dosis es útil: te ayuda a preparar un examen o a reaccionar rápido en la carretera.",
				"La ansiedad se convierte en un problema cuando la alarma salta demasiado a menudo, con demasiada fuerza o en situaciones que en realidad no son peligrosas. Entonces empieza a limitar lo que haces, y este módulo te ayudará a entenderlo y cambiarlo.",
			},
			extras: []block{
				{"info", "La ansiedad **no** es peligrosa, aunque resulte abrumadora. Es desagradable, pero siempre pasa."},
			},
		},
	},
}
